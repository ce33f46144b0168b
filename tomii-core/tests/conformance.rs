//! The scheduler conformance suite: the same test bodies run against every shipped scheduler,
//! Rust and C, through the real loader. A new scheduler joins by adding one line to
//! `conformance!` below; `every_built_scheduler_is_in_the_suite` fails until it does.
//!
//! Two levels: the contract itself, driven directly through `SchedulerInstance` (push and pop from
//! one or many threads, batch limits, worker ranges, create/destroy), and whole runs, checked
//! against the trace invariants and, where kernels run, the reference checksums.
//!
//! Every whole run is made in both modes (`common::modes`, tokio's `rt_common.rs` style): a real
//! run on the engine's threads (`<scheduler>::real::*`) and a simulated one on virtual workers
//! (`<scheduler>::simulated::*`), which share the host core (`src/host/`). So a contract
//! check is written once and holds in both; `broken::*` holds a broken scheduler's violations to
//! the same message in both.
//!
//! The whole runs are made twice: as they are, and with hooks on, wrapped by the hook checker
//! (tests/plugins/hook-checker), which checks every promise the host makes about hooks. The
//! checker reads the scheduler to wrap from `$TOMII_HOOK_CHECKER_INNER` when it is loaded, once
//! per process, so each hooks-on test runs its body in a child process of this test binary, with
//! the variable set. A SERIAL C scheduler with every hook (tests/c/serial_sched.c) runs there too.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::c_fixtures::CFixtures;
use common::modes::Mode;
use common::{broken_lib, plugin, plugin_dir, sinks};
use tomii_core::engine::{self, Output, RunConfig};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::{SchedulerInstance, SchedulerPlugin, SchedulerSetup, scheduler_file_name};
use tomii_types::abi::{TOMII_AUTO_POP_BATCH, TOMII_NO_WORKER, TOMII_SCHED_BATCH_POPS, TomiiTask};

const TIMEOUT: Duration = Duration::from_secs(60);
const WORKERS: u32 = 4;

/// The whole-run tests of one scheduler in one mode: `mode => Mode::X`, inside its module.
macro_rules! whole_runs {
    ($scheduler:ident, $name:literal, $($mode:ident => $which:expr),+) => {
        $(mod $mode {
            #[test]
            fn runs_graphs_to_the_reference_values() {
                super::super::runs_graphs_to_the_reference_values($name, $which);
            }
            #[test]
            fn runs_graphs_with_hooks_checked() {
                let test = concat!(stringify!($scheduler), "::", stringify!($mode), "::runs_graphs_with_hooks_checked");
                let inner = || super::super::plugin(&super::super::scheduler_file_name($name));
                super::super::runs_graphs_with_hooks_checked(test, $which, inner);
            }
        })+
    };
}

/// One module of tests per scheduler: `module => "name"`.
macro_rules! conformance {
    ($($module:ident => $name:literal),+ $(,)?) => {
        const SUITE: &[&str] = &[$($name),+];
        $(mod $module {
            #[test]
            fn every_pushed_task_is_popped_exactly_once() {
                super::every_pushed_task_is_popped_exactly_once($name);
            }
            #[test]
            fn batched_pop_respects_its_maximum() {
                super::batched_pop_respects_its_maximum($name);
            }
            #[test]
            fn batching_pops_take_a_fair_share() {
                super::batching_pops_take_a_fair_share($name);
            }
            #[test]
            fn worker_ranges_are_honoured() {
                super::worker_ranges_are_honoured($name);
            }
            #[test]
            fn concurrent_push_and_pop_lose_nothing() {
                super::concurrent_push_and_pop_lose_nothing($name);
            }
            #[test]
            fn create_and_destroy_repeatedly() {
                super::create_and_destroy_repeatedly($name);
            }
            whole_runs!($module, $name, real => crate::Mode::Real, simulated => crate::Mode::Simulated);
        })+
    };
}

conformance! {
    fifo => "fifo",
    c_fifo => "c-fifo",
    random => "random",
    priority => "priority",
    critical_path => "critical-path",
    locality => "locality",
    work_stealing => "work-stealing",
    multi_slot_batch => "multi-slot-batch",
}

#[test]
fn every_built_scheduler_is_in_the_suite() {
    let prefix = format!("{}tomii_sched_", std::env::consts::DLL_PREFIX);
    let missing: Vec<String> = std::fs::read_dir(plugin_dir())
        .expect("the plugin directory")
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().into_string().ok()?;
            let stem = file.strip_prefix(&prefix)?.strip_suffix(std::env::consts::DLL_SUFFIX)?;
            Some(stem.replace('_', "-"))
        })
        .filter(|name| !SUITE.contains(&name.as_str()))
        .collect();
    assert!(missing.is_empty(), "schedulers built but not in the conformance suite: {missing:?}");
}

// ---- the contract, through SchedulerInstance ----

fn load(name: &str) -> SchedulerPlugin {
    let path: PathBuf = plugin(&scheduler_file_name(name));
    SchedulerPlugin::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Nodes of the synthetic task set: (name, factor, priority, worker range).
const NODES: [(&str, u32, i32, (u32, u32)); 3] =
    [("any", 64, 0, (0, WORKERS)), ("first", 8, 1, (0, 1)), ("upper", 8, -1, (2, WORKERS))];
const SLOTS: u32 = 4;

/// What the scheduler is told at create time: room for `slots` slots of the task set.
fn setup_for(slots: u32) -> SchedulerSetup<'static> {
    SchedulerSetup {
        workers: WORKERS,
        slots,
        frames: 0,
        tasks_per_frame: NODES.iter().map(|n| u64::from(n.1)).sum(),
        nodes: NODES.iter().map(|&(name, factor, priority, (lo, hi))| (name, factor, priority, lo, hi)).collect(),
        knobs: &[],
    }
}

fn setup() -> SchedulerSetup<'static> {
    setup_for(SLOTS)
}

/// Every task of the set in every slot, with distinct handles (the scheduler must treat them as
/// opaque), in frame order.
fn tasks() -> Vec<TomiiTask> {
    let mut tasks = Vec::new();
    for slot in 0..SLOTS {
        for (node, &(_, factor, priority, (lo, hi))) in NODES.iter().enumerate() {
            for instance in 0..factor {
                tasks.push(TomiiTask {
                    handle: 0xA000_0000_0000 + tasks.len() as u64,
                    frame: u64::from(slot),
                    ready_ns: tasks.len() as u64,
                    cost_ns: 100 + u64::from(instance),
                    rank: u64::from(3 - node as u32),
                    node: node as u32,
                    instance,
                    slot,
                    priority,
                    worker_lo: lo,
                    worker_hi: hi,
                    locality: if instance % 2 == 0 { instance % WORKERS } else { TOMII_NO_WORKER },
                    reserved: 0,
                });
            }
        }
    }
    tasks
}

/// Pops from every worker, round after round, until a whole round yields nothing; returns what
/// each worker got, checking ranges and the batch limit on the way.
fn drain(scheduler: &SchedulerInstance<'_>, max: usize) -> Vec<(u32, TomiiTask)> {
    let mut got = Vec::new();
    let mut out = vec![TomiiTask::default(); max];
    loop {
        let mut round = 0;
        for worker in 0..WORKERS {
            let count = scheduler.pop(worker, &mut out).unwrap_or_else(|e| panic!("pop failed: {e}"));
            assert!(count <= max, "pop returned {count} tasks for a buffer of {max}");
            got.extend(out[..count].iter().map(|&task| (worker, task)));
            round += count;
        }
        if round == 0 {
            return got;
        }
    }
}

/// Asserts that `got` holds each of `pushed` exactly once, each on an allowed worker. Only the
/// handles of `got` are read: a scheduler with `TOMII_SCHED_POP_HANDLES` writes nothing else.
fn assert_exactly_once(name: &str, pushed: &[TomiiTask], got: &[(u32, TomiiTask)]) {
    let by_handle: HashMap<u64, &TomiiTask> = pushed.iter().map(|task| (task.handle, task)).collect();
    let mut seen: HashMap<u64, u32> = HashMap::new();
    for &(worker, popped) in got {
        let Some(&task) = by_handle.get(&popped.handle) else {
            panic!("{name}: popped handle {:#x}, which was never pushed", popped.handle);
        };
        assert!(
            (task.worker_lo..task.worker_hi).contains(&worker),
            "{name}: task {:#x} allowed on {}..{} went to worker {worker}",
            task.handle,
            task.worker_lo,
            task.worker_hi
        );
        *seen.entry(task.handle).or_default() += 1;
    }
    for task in pushed {
        assert_eq!(seen.remove(&task.handle), Some(1), "{name}: task {:#x} popped this many times", task.handle);
    }
    assert!(seen.is_empty(), "{name}: popped handles never pushed: {:?}", seen.keys().collect::<Vec<_>>());
}

fn every_pushed_task_is_popped_exactly_once(name: &str) {
    let plugin = load(name);
    let scheduler = SchedulerInstance::create(&plugin, &setup()).unwrap_or_else(|e| panic!("{e}"));
    let pushed = tasks();
    for (i, batch) in pushed.chunks(7).enumerate() {
        let worker = if i % 3 == 0 { TOMII_NO_WORKER } else { i as u32 % WORKERS };
        scheduler.push(worker, batch).unwrap_or_else(|e| panic!("push failed: {e}"));
    }
    assert_exactly_once(name, &pushed, &drain(&scheduler, 1));
}

fn batched_pop_respects_its_maximum(name: &str) {
    let plugin = load(name);
    let scheduler = SchedulerInstance::create(&plugin, &setup()).unwrap_or_else(|e| panic!("{e}"));
    let pushed = tasks();
    for max in [3, 8] {
        scheduler.push(TOMII_NO_WORKER, &pushed).unwrap_or_else(|e| panic!("push failed: {e}"));
        assert_exactly_once(name, &pushed, &drain(&scheduler, max));
    }
}

/// A scheduler that bounds its own batches (`TOMII_SCHED_BATCH_POPS`) is given room for
/// `TOMII_AUTO_POP_BATCH` tasks: a first pop of a set of tasks every worker may run takes at most
/// its share of them, so the other workers find the rest. Others are never given that room.
fn batching_pops_take_a_fair_share(name: &str) {
    let plugin = load(name);
    if plugin.flags() & TOMII_SCHED_BATCH_POPS == 0 {
        return;
    }
    let scheduler = SchedulerInstance::create(&plugin, &setup()).unwrap_or_else(|e| panic!("{e}"));
    let pushed: Vec<TomiiTask> = tasks().into_iter().filter(|t| t.worker_hi - t.worker_lo == WORKERS).collect();
    scheduler.push(TOMII_NO_WORKER, &pushed).unwrap_or_else(|e| panic!("push failed: {e}"));
    let mut out = vec![TomiiTask::default(); TOMII_AUTO_POP_BATCH as usize];
    let first = scheduler.pop(0, &mut out).unwrap_or_else(|e| panic!("pop failed: {e}"));
    let share = pushed.len().div_ceil(WORKERS as usize);
    assert!(
        (1..=share).contains(&first),
        "{name}: a first pop of {} tasks on {WORKERS} workers took {first}",
        pushed.len()
    );
    let mut got: Vec<(u32, TomiiTask)> = out[..first].iter().map(|task| (0, *task)).collect();
    got.extend(drain(&scheduler, TOMII_AUTO_POP_BATCH as usize));
    assert_exactly_once(name, &pushed, &got);
}

fn worker_ranges_are_honoured(name: &str) {
    let plugin = load(name);
    let scheduler = SchedulerInstance::create(&plugin, &setup()).unwrap_or_else(|e| panic!("{e}"));
    // Only restricted tasks: a worker outside every range must get nothing, and those inside get all.
    let pushed: Vec<TomiiTask> = tasks().into_iter().filter(|t| t.worker_hi - t.worker_lo < WORKERS).collect();
    scheduler.push(0, &pushed).unwrap_or_else(|e| panic!("push failed: {e}"));
    let mut out = vec![TomiiTask::default(); 4];
    assert_eq!(scheduler.pop(1, &mut out).unwrap(), 0, "{name}: worker 1 may run none of these tasks");
    assert_exactly_once(name, &pushed, &drain(&scheduler, 2));
}

fn concurrent_push_and_pop_lose_nothing(name: &str) {
    const ROUNDS: usize = 40;
    let plugin = load(name);
    // Sized for everything the threads push, as if each round of each thread were a slot.
    let setup = setup_for(WORKERS * ROUNDS as u32);
    let scheduler = SchedulerInstance::create(&plugin, &setup).unwrap_or_else(|e| panic!("{e}"));
    let template = tasks();
    // Each thread pushes its own copies (distinct handles), one slot's worth at a time, and pops
    // concurrently with the others.
    let got: Vec<Vec<(u32, TomiiTask)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|worker| {
                let (scheduler, template) = (&scheduler, &template);
                scope.spawn(move || {
                    let mut got = Vec::new();
                    let mut out = vec![TomiiTask::default(); 2];
                    let per_slot = template.len() / SLOTS as usize;
                    for round in 0..ROUNDS {
                        let mut batch: Vec<TomiiTask> = template[..per_slot].to_vec();
                        for task in &mut batch {
                            task.handle = (u64::from(worker) << 40) | ((round as u64) << 20) | (task.handle & 0xFFFFF);
                        }
                        scheduler.push(worker, &batch).unwrap_or_else(|e| panic!("push failed: {e}"));
                        for _ in 0..per_slot / WORKERS as usize {
                            let count = scheduler.pop(worker, &mut out).unwrap_or_else(|e| panic!("pop failed: {e}"));
                            got.extend(out[..count].iter().map(|&task| (worker, task)));
                        }
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a pushing thread")).collect()
    });
    let mut all: Vec<(u32, TomiiTask)> = got.into_iter().flatten().collect();
    all.extend(drain(&scheduler, 4));
    let per_slot = template.len() / SLOTS as usize;
    let pushed: Vec<TomiiTask> = (0..WORKERS)
        .flat_map(|worker| {
            let template = &template;
            (0..ROUNDS).flat_map(move |round| {
                template[..per_slot].iter().map(move |task| TomiiTask {
                    handle: (u64::from(worker) << 40) | ((round as u64) << 20) | (task.handle & 0xFFFFF),
                    ..*task
                })
            })
        })
        .collect();
    assert_exactly_once(name, &pushed, &all);
}

fn create_and_destroy_repeatedly(name: &str) {
    let plugin = load(name);
    let pushed = tasks();
    for _ in 0..50 {
        let scheduler = SchedulerInstance::create(&plugin, &setup()).unwrap_or_else(|e| panic!("{e}"));
        // Destroy with tasks still inside: the state must free them too (valgrind checks in CI).
        scheduler.push(TOMII_NO_WORKER, &pushed[..20]).unwrap_or_else(|e| panic!("push failed: {e}"));
    }
}

// ---- whole runs, in both modes ----

/// A fixture graph, the reference value of its sink in a frame, and how to run it.
struct Case {
    file: &'static str,
    reference: fn(u64) -> u64,
    workers: u32,
    slots: u32,
    pop_batch: u32,
}

/// Every whole run: the fixture graphs on two workers, and one on every worker with more slots.
const CASES: [Case; 4] = [
    Case { file: "checksum_chain.json", reference: sinks::chain, workers: 2, slots: 3, pop_batch: 1 },
    Case { file: "diamond.json", reference: sinks::diamond, workers: 2, slots: 3, pop_batch: 4 },
    Case { file: "pinned_checksum.json", reference: sinks::pinned, workers: 2, slots: 3, pop_batch: 2 },
    Case { file: "checksum_chain.json", reference: sinks::chain, workers: WORKERS, slots: 6, pop_batch: 3 },
];

fn compile(file: &str) -> CompiledGraph {
    graph::parse_str(file, &common::graph_text(file)).unwrap_or_else(|e| panic!("{e}"))
}

fn runs_graphs_to_the_reference_values(name: &str, mode: Mode) {
    whole_runs(plugin(&scheduler_file_name(name)), mode, |_, _| {});
}

/// Runs every case in `mode` with the scheduler at `path`, checks the trace, the tasks and
/// frames, and, where kernels run, the values; then `check`s the outcome.
fn whole_runs(path: PathBuf, mode: Mode, check: fn(&RunConfig, &engine::RunOutcome)) {
    for case in &CASES {
        let file = case.file;
        let graph = compile(file);
        let sink = graph.nodes.len() as u32 - 1;
        let config = RunConfig {
            workers: case.workers,
            slots: case.slots,
            frames: 40,
            pop_batch: case.pop_batch,
            trace: true,
            collect_outputs: true,
            ..RunConfig::default()
        };
        let outcome = mode
            .run(&graph, &path, &config, TIMEOUT)
            .unwrap_or_else(|e| panic!("{} on {file} ({mode:?}) failed: {e}", path.display()));
        let name = &outcome.report.scheduler.name;
        common::trace::check(&graph, &config, &outcome.trace);
        assert_eq!(outcome.report.frames, config.frames, "{name} on {file} ({mode:?})");
        assert_eq!(outcome.report.tasks, config.frames * graph.instance_count() as u64, "{name} on {file} ({mode:?})");
        if mode.runs_kernels() {
            assert_eq!(outcome.outputs.len() as u64, config.frames, "{name} on {file}");
        }
        for (frame, outputs) in outcome.outputs.iter().enumerate() {
            let value = outputs.iter().find(|(node, _, _)| *node == sink).map(|(_, _, v)| v);
            let expected = Output::UInt((case.reference)(frame as u64));
            assert_eq!(value, Some(&expected), "{name} on {file}, frame {frame}");
        }
        check(&config, &outcome);
    }
}

// ---- whole runs with hooks on ----

/// The hook checker, and the variable that names the scheduler it wraps.
const HOOK_CHECKER: &str = "libtomii_test_hook_checker.so";
const INNER_VAR: &str = "TOMII_HOOK_CHECKER_INNER";
/// Set, to the test's name, in the child process that runs a hooks-on test's body.
const CHILD_VAR: &str = "TOMII_CONFORMANCE_HOOKS_CHILD";

/// The SERIAL C scheduler with every hook, built at first use.
static C_SERIAL: CFixtures = CFixtures::new(&[("c_serial", "serial_sched.c", &[])]);

/// A SERIAL scheduler that relies on the host's lock (no lock of its own) and has every hook: with
/// the checker, which is then SERIAL too, no two calls overlap and every hook promise holds, in
/// both modes.
mod serial_c_scheduler {
    #[test]
    fn runs_graphs_with_hooks_checked() {
        let test = "serial_c_scheduler::runs_graphs_with_hooks_checked";
        super::runs_graphs_with_hooks_checked(test, super::Mode::Real, || super::C_SERIAL.path("c_serial"));
    }

    #[test]
    fn runs_simulated_graphs_with_hooks_checked() {
        let test = "serial_c_scheduler::runs_simulated_graphs_with_hooks_checked";
        super::runs_graphs_with_hooks_checked(test, super::Mode::Simulated, || super::C_SERIAL.path("c_serial"));
    }
}

/// Every whole run in `mode`, with the scheduler `inner()` wrapped by the hook checker: the values
/// and the trace as without it, and the checker saw every hook called as promised. `test` is the
/// calling test's name, which the child process runs alone.
fn runs_graphs_with_hooks_checked(test: &str, mode: Mode, inner: impl FnOnce() -> PathBuf) {
    if std::env::var_os(CHILD_VAR).is_some_and(|child| child == test) {
        return whole_runs(plugin(HOOK_CHECKER), mode, assert_hooks_checked);
    }
    let mut command = Command::new(std::env::current_exe().expect("the test executable's path"));
    command.args(["--exact", test, "--test-threads", "1"]).env(CHILD_VAR, test).env(INNER_VAR, inner());
    let run = common::cli::finish_within(command, TIMEOUT);
    assert!(
        run.status.success() && run.stdout.contains("1 passed"),
        "the hooks-on runs failed ({}):\n{}\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
}

/// The checker's stats in the report: no promise broken, and every hook called once per task or
/// frame.
fn assert_hooks_checked(config: &RunConfig, outcome: &engine::RunOutcome) {
    let report = &outcome.report;
    let stats = report.scheduler.stats.as_ref().expect("the hook checker's stats");
    let checker = &stats["hook_checker"];
    let count = |key: &str| checker[key].as_u64().unwrap_or_else(|| panic!("no {key:?} in {checker}"));
    assert!(report.scheduler.name.starts_with("hook-checker("), "{}", report.scheduler.name);
    assert_eq!(checker["first_violation"], serde_json::Value::Null, "{checker}");
    assert_eq!(count("violations"), 0, "{checker}");
    for hook in ["popped", "task_started", "task_completed"] {
        assert_eq!(count(hook), report.tasks, "{hook}, once per task: {checker}");
    }
    for hook in ["frame_started", "frame_completed"] {
        assert_eq!(count(hook), config.frames, "{hook}, once per frame: {checker}");
    }
    assert_eq!((count("frames_in_flight"), count("tasks_in_flight")), (0, 0), "{checker}");
}

// ---- a broken scheduler, in both modes ----

/// How long a broken run may be idle before it stops as stalled (a lost task).
const STALL_TIMEOUT: Duration = Duration::from_millis(300);

/// The broken scheduler (tests/plugins/broken-scheduler) with `fault=<this>`, and its C fixture
/// with `-DFAULT_<THIS>`: each breaks its contract after five correct hand-outs. A scheduler whose
/// every pop sleeps 100 ms (tests/c/crash_sched.c).
static C_BROKEN: CFixtures = CFixtures::new(&[
    ("c_broken_overflow", "broken_runtime.c", &["-DFAULT_OVERFLOW"]),
    ("c_slow_pop", "crash_sched.c", &["-DSLEEP_POP_US=100000"]),
]);

/// A run of 10 frames on `workers` workers with the scheduler's `options`, stalled after 300 ms.
fn broken_config(options: &[(&str, &str)], workers: u32) -> RunConfig {
    RunConfig {
        workers,
        frames: 10,
        trace: true,
        stall_timeout: STALL_TIMEOUT,
        scheduler_options: options.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect(),
        ..RunConfig::default()
    }
}

/// Runs `file` with the broken scheduler at `path` under `config` in both modes, and returns each
/// mode's error; each must be a failure that kept what ran.
fn broken_in_both_modes(path: &std::path::Path, file: &str, config: &RunConfig) -> [String; 2] {
    let graph = compile(file);
    [Mode::Real, Mode::Simulated].map(|mode| {
        let failure = match mode.run(&graph, path, config, TIMEOUT) {
            Ok(_) => panic!("{} on {file} ({mode:?}): the run succeeded", path.display()),
            Err(failure) => failure,
        };
        let partial = failure.partial.unwrap_or_else(|| panic!("{} ({mode:?}): what ran is kept", path.display()));
        assert_eq!(partial.report.status, "failed", "{} ({mode:?})", path.display());
        failure.error.to_string()
    })
}

/// One worker: the real run and the simulation hand out the same tasks in the same order, so the
/// violation is the same to the task.
macro_rules! same_violation {
    ($($test:ident => $fault:literal says $needle:literal;)+) => {
        mod broken {
            $(#[test]
            fn $test() {
                let config = super::broken_config(&[("fault", $fault)], 1);
                let [real, simulated] = super::broken_in_both_modes(&super::broken_lib(), "checksum_chain.json", &config);
                assert_eq!(real, simulated, "the same violation in both modes");
                assert!(real.contains($needle) && !real.contains('\n'), "{real}");
            })+

            /// Two workers and pinned tasks: which task goes to the wrong worker depends on the
            /// real run's timing, so the violation is compared up to the task.
            #[test]
            fn wrong_worker() {
                let config = super::broken_config(&[("fault", "wrong-worker")], 2);
                let [real, simulated] =
                    super::broken_in_both_modes(&super::broken_lib(), "pinned_checksum.json", &config);
                let kind = |message: &str| message.split(" to worker ").next().unwrap_or_default().to_owned();
                assert_eq!(kind(&real), kind(&simulated), "{real}\n{simulated}");
                assert!(real.contains(", outside its allowed workers "), "{real}");
                assert!(simulated.contains(", outside its allowed workers "), "{simulated}");
            }

            #[test]
            fn c_overflow() {
                let path = super::C_BROKEN.path("c_broken_overflow");
                let config = super::broken_config(&[], 1);
                let [real, simulated] = super::broken_in_both_modes(&path, "checksum_chain.json", &config);
                assert_eq!(real, simulated, "the same violation in both modes");
                assert!(real.contains("pop reported 2 tasks for a buffer of 1"), "{real}");
            }

            /// A call that outlasts `scheduler_call_timeout` is found by the port's watchdog in
            /// both modes (each pop of this one sleeps 100 ms).
            #[test]
            fn a_stuck_call() {
                let path = super::C_BROKEN.path("c_slow_pop");
                let config = super::RunConfig {
                    scheduler_call_timeout: std::time::Duration::from_millis(20),
                    ..super::broken_config(&[], 1)
                };
                let [real, simulated] = super::broken_in_both_modes(&path, "checksum_chain.json", &config);
                assert_eq!(real, simulated, "the same hang in both modes");
                assert!(real.contains("did not return from pop on worker 0 within 20 ms"), "{real}");
            }
        }
    };
}

same_violation! {
    duplicate => "duplicate" says "broke its contract: returned the same task twice: node ";
    garbage => "garbage" says "broke its contract: pop returned handle 0xffffffffffffffff, which the host never issued";
    drop => "drop" says "stalled: every worker was idle for 300 ms with 1 frame(s) incomplete";
    error => "error" says "broke its contract: push_keep failed: injected error";
    panic => "panic" says "broke its contract: pop failed: panicked: injected panic";
}
