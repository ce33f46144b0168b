//! Helpers shared by the integration tests: where the built plugins and fixture graphs are, an
//! independent reference implementation of the synthetic `checksum` kernel and the fixture graphs'
//! sink values, a watchdog for runs, the trace invariants, the C fixture builder, the `tomii`
//! child-process runner, and the two modes a run can have (`modes.rs`: real and simulated).
//!
//! tomii-core never depends on a plugin crate, not even for tests: plugins are found at run time in
//! `target/<profile>/`, so `cargo build --workspace` must run before `cargo test`. The checksum
//! here is rewritten from plugins/synthetic/README.md, never linked from the plugin.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

pub mod modes;

/// `target/<profile>/`: the parent of the directory holding the test executable (`deps/`).
pub fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable has a directory");
    deps.parent().expect("the test executable's directory has a parent").to_path_buf()
}

/// A built plugin in `plugin_dir()`; panics with what to do when it is missing.
pub fn plugin(file: &str) -> PathBuf {
    let path = plugin_dir().join(file);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` first (the tests load the plugins built there)",
        path.display()
    );
    path
}

/// The synthetic kernel library (noop, spin, touch, checksum, fail, panic).
pub fn synthetic_lib() -> PathBuf {
    plugin("libtomii_synthetic.so")
}

/// The fifo scheduler.
pub fn fifo_lib() -> PathBuf {
    plugin("libtomii_sched_fifo.so")
}

/// The scheduler that breaks its contract on purpose (tests/plugins/broken-scheduler).
pub fn broken_lib() -> PathBuf {
    plugin("libtomii_test_broken_scheduler.so")
}

/// A fixture graph in tests/graphs/.
pub fn graph_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/graphs").join(name)
}

/// The text of a fixture graph.
pub fn graph_text(name: &str) -> String {
    let path = graph_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `body` on its own thread; fails the test if it has not returned after `timeout`.
pub fn within_timeout<T: Send + 'static>(
    timeout: Duration,
    what: &str,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)));
    });
    match result.recv_timeout(timeout) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => std::panic::resume_unwind(payload),
        Err(_) => panic!("{what} did not finish within {timeout:?}"),
    }
}

/// The reference checksum (plugins/synthetic/README.md, "checksum").
pub mod checksum {
    const PRIME: u64 = 0x100000001b3;
    const BASIS: u64 = 0xcbf29ce484222325;

    /// `mix(h, w) = g ^ (g >> 29)` with `g = (h ^ w) * PRIME mod 2^64`.
    pub fn mix(hash: u64, word: u64) -> u64 {
        let g = (hash ^ word).wrapping_mul(PRIME);
        g ^ (g >> 29)
    }

    /// 64-bit FNV-1a.
    pub fn fnv1a(bytes: &[u8]) -> u64 {
        let mut hash = BASIS;
        for &byte in bytes {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
        hash
    }

    /// The word of a signed integer argument: its two's-complement bits.
    pub fn int(value: i64) -> u64 {
        value as u64
    }

    /// The word of a string argument.
    pub fn text(value: &str) -> u64 {
        fnv1a(value.as_bytes())
    }

    /// What `checksum` returns for instance `instance` of node `node` in frame `frame`, given the
    /// words of its arguments in order.
    pub fn expected(node: &str, instance: u32, frame: u64, words: &[u64]) -> u64 {
        let seed = mix(mix(fnv1a(node.as_bytes()), u64::from(instance)), frame);
        words.iter().fold(seed, |hash, &word| mix(hash, word))
    }
}

/// The sink value of each fixture graph in a frame, computed without the engine.
pub mod sinks {
    use super::checksum::{expected, int, text};

    /// checksum_chain.json's sink c[0].
    pub fn chain(frame: u64) -> u64 {
        let a: Vec<u64> = (0..4).map(|i| expected("a", i, frame, &[7])).collect();
        let b: Vec<u64> = (0..4).map(|i| expected("b", i, frame, &[a[i as usize], int(-3)])).collect();
        let mut words = b;
        words.push(text("tag"));
        expected("c", 0, frame, &words)
    }

    /// diamond.json's sink.
    pub fn diamond(frame: u64) -> u64 {
        let src: Vec<u64> = (0..2).map(|i| expected("src", i, frame, &[11])).collect();
        expected("sink", 0, frame, &src)
    }

    /// pinned_checksum.json's sink: src[0..4] → pinned[0..2] → sink (on workers 0, 1, 0).
    pub fn pinned(frame: u64) -> u64 {
        let mut src: Vec<u64> = (0..4).map(|i| expected("src", i, frame, &[5])).collect();
        src.push(text("pin"));
        let pinned: Vec<u64> = (0..2).map(|i| expected("pinned", i, frame, &src)).collect();
        expected("sink", 0, frame, &pinned)
    }
}

/// The invariants of the trace of a successful run.
pub mod trace {
    use std::collections::{BTreeMap, HashMap};

    use tomii_core::engine::{RunConfig, TraceRecord};
    use tomii_core::graph::CompiledGraph;

    /// Checks the trace of a successful run against the graph and configuration:
    /// exactly once per (frame, node, instance); successors start after their predecessors end in
    /// the same frame; one slot per frame, below `slots`; one frame at a time per slot; at most
    /// `slots` frames in flight; every worker inside the node's range.
    pub fn check(graph: &CompiledGraph, config: &RunConfig, trace: &[TraceRecord]) {
        let tasks: HashMap<(u64, u32), &TraceRecord> = exactly_once(graph, config.frames, trace);
        for (&(frame, instance), record) in &tasks {
            for &pred in graph.predecessors(instance) {
                let before = tasks[&(frame, pred)];
                assert!(
                    record.start >= before.end,
                    "frame {frame}: {} started before its predecessor {} ended",
                    graph.instance_name(instance),
                    graph.instance_name(pred)
                );
            }
            let (lo, hi) = graph.node_of(instance).use_workers.unwrap_or((0, config.workers));
            assert!((lo..hi).contains(&record.worker), "{record:?} ran outside workers {lo}..{hi}");
        }
        let spans = frame_spans(trace, config.slots);
        check_slot_reuse(&spans);
        let in_flight = max_overlap(spans.values().map(|s| (s.begin, s.end)));
        assert!(in_flight <= config.slots as usize, "{in_flight} frames overlapped with {} slots", config.slots);
    }

    /// Every (frame, instance) once and nothing else; keyed by (frame, global instance id).
    pub fn exactly_once<'t>(
        graph: &CompiledGraph,
        frames: u64,
        trace: &'t [TraceRecord],
    ) -> HashMap<(u64, u32), &'t TraceRecord> {
        let mut tasks = HashMap::new();
        for record in trace {
            let node = &graph.nodes[record.node as usize];
            assert!(record.instance < node.factor && record.frame < frames, "unexpected record {record:?}");
            let instance = node.first + record.instance;
            assert!(tasks.insert((record.frame, instance), record).is_none(), "ran twice: {record:?}");
        }
        assert_eq!(tasks.len() as u64, frames * graph.instance_count() as u64, "records in the trace");
        tasks
    }

    /// When a frame was in flight (first ready to last end), and in which slot.
    struct Span {
        slot: u32,
        begin: u64,
        end: u64,
    }

    /// Per frame, its span; asserts each frame kept one slot below `slots`.
    fn frame_spans(trace: &[TraceRecord], slots: u32) -> BTreeMap<u64, Span> {
        let mut spans: BTreeMap<u64, Span> = BTreeMap::new();
        for r in trace {
            assert!(r.slot < slots, "{r:?} uses a slot beyond {slots}");
            let span = spans.entry(r.frame).or_insert(Span { slot: r.slot, begin: r.ready, end: r.end });
            assert_eq!(span.slot, r.slot, "frame {} ran in two slots", r.frame);
            span.begin = span.begin.min(r.ready.min(r.start));
            span.end = span.end.max(r.end);
        }
        spans
    }

    /// Frames sharing a slot do not overlap: each starts after the previous one in its slot ended.
    fn check_slot_reuse(spans: &BTreeMap<u64, Span>) {
        let mut last_in_slot: HashMap<u32, (u64, u64)> = HashMap::new();
        for (&frame, span) in spans {
            if let Some((previous, end)) = last_in_slot.insert(span.slot, (frame, span.end)) {
                assert!(span.begin >= end, "frame {frame} began in slot {} before frame {previous} ended", span.slot);
            }
        }
    }

    /// The most intervals `[begin, end)` that hold at one instant.
    pub fn max_overlap(intervals: impl Iterator<Item = (u64, u64)>) -> usize {
        // At equal times an end (0) sorts before a begin (1): half-open intervals.
        let mut events: Vec<(u64, u8)> = intervals.flat_map(|(begin, end)| [(begin, 1), (end, 0)]).collect();
        events.sort_unstable();
        let (mut now, mut most) = (0usize, 0usize);
        for (_, kind) in events {
            if kind == 1 {
                now += 1;
                most = most.max(now);
            } else {
                now -= 1;
            }
        }
        most
    }
}

/// C plugins built from tests/c at test time, once per test binary, into a temporary directory
/// with `$CC` (default `cc`); a missing compiler fails the tests that need one.
pub mod c_fixtures {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::{Mutex, OnceLock};

    /// One library built from tests/c: (library stem, source file, extra compiler arguments).
    pub type Fixture = (&'static str, &'static str, &'static [&'static str]);

    /// A set of fixtures, compiled together by the first test that needs one of them.
    pub struct CFixtures {
        list: &'static [Fixture],
        /// The directory holding the compiled fixtures, or why they could not be built.
        /// `OnceLock` makes concurrent tests wait for that one build.
        built: OnceLock<Result<tempfile::TempDir, String>>,
    }

    impl CFixtures {
        pub const fn new(list: &'static [Fixture]) -> CFixtures {
            CFixtures { list, built: OnceLock::new() }
        }

        /// The path of the compiled fixture `stem` (one of the list).
        pub fn path(&self, stem: &str) -> PathBuf {
            assert!(self.list.iter().any(|f| f.0 == stem), "no C fixture is called {stem:?}");
            match self.built.get_or_init(|| build(self.list)) {
                Ok(dir) => dir.path().join(library_file(stem)),
                Err(message) => panic!("{message}"),
            }
        }
    }

    pub fn library_file(stem: &str) -> String {
        format!("{}{stem}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
    }

    /// Compiles every fixture, in parallel, into a new temporary directory.
    fn build(list: &[Fixture]) -> Result<tempfile::TempDir, String> {
        let dir = tempfile::Builder::new()
            .prefix("tomii-c-plugins-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory for the C fixtures: {e}"))?;
        let errors: Vec<String> = std::thread::scope(|scope| {
            let jobs: Vec<_> = list
                .iter()
                .map(|&(stem, source, extra)| {
                    let output = dir.path().join(library_file(stem));
                    scope.spawn(move || compile(source, extra, &output))
                })
                .collect();
            jobs.into_iter().filter_map(|job| job.join().expect("a compiler thread panicked").err()).collect()
        });
        if let Some(first) = errors.first() {
            return Err(format!("{first}\n({} of {} C fixtures failed to build)", errors.len(), list.len()));
        }
        remove_at_exit(dir.path());
        Ok(dir)
    }

    /// `$CC -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -I <repo>/tomii-types/include EXTRA
    /// -o OUTPUT tests/c/SOURCE`.
    fn compile(source: &str, extra: &[&str], output: &Path) -> Result<(), String> {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let include = manifest.join("../tomii-types/include");
        let source = manifest.join("tests/c").join(source);
        // `$CC` may carry arguments of its own ("ccache gcc", "gcc -m64").
        let cc = std::env::var("CC").ok().filter(|cc| !cc.trim().is_empty()).unwrap_or_else(|| "cc".to_owned());
        let mut words = cc.split_whitespace();
        let mut command = Command::new(words.next().expect("a non-empty compiler command"));
        command.args(words);
        command.args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I"]);
        command.arg(&include).args(extra).arg("-o").arg(output).arg(&source);
        let described = format!("{command:?}");
        let result = command.output().map_err(|e| {
            format!(
                "cannot run the C compiler `{cc}` ({e}): these tests build C plugins; install a C compiler (gcc) or point $CC at one\n  command: {described}"
            )
        })?;
        if !result.status.success() {
            return Err(format!(
                "compiling {} failed ({}):\n  command: {described}\n{}",
                source.display(),
                result.status,
                String::from_utf8_lossy(&result.stderr)
            ));
        }
        Ok(())
    }

    /// Removes the fixture directory when the test binary exits. A `static` is never dropped, so
    /// its `TempDir` would otherwise stay behind; removing the files does not affect loaded
    /// libraries.
    fn remove_at_exit(dir: &Path) {
        static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
        extern "C" fn remove() {
            let dirs = DIRS.lock().unwrap_or_else(|p| p.into_inner());
            for dir in dirs.iter() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        let mut dirs = DIRS.lock().unwrap_or_else(|p| p.into_inner());
        if dirs.is_empty() {
            // SAFETY: `remove` is a plain function that neither unwinds nor calls `exit`.
            unsafe { libc::atexit(remove) };
        }
        dirs.push(dir.to_owned());
    }
}

/// The `tomii` command as a child process, under a watchdog.
pub mod cli {
    use std::io::Read;
    use std::process::{Command, ExitStatus, Stdio};
    use std::time::{Duration, Instant};

    /// How long a child may run before the test kills it and fails.
    pub const TIMEOUT: Duration = Duration::from_secs(60);

    /// What a finished `tomii` child produced.
    pub struct Run {
        pub status: ExitStatus,
        pub stdout: String,
        pub stderr: String,
    }

    /// `tomii`, in an environment that does not depend on the caller's.
    pub fn tomii() -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tomii"));
        for var in ["RUST_BACKTRACE", "RUST_LIB_BACKTRACE", "TOMII_SCHEDULER_PATH"] {
            command.env_remove(var);
        }
        command
    }

    /// Runs `command` to completion with piped output; kills it and fails after `TIMEOUT`.
    pub fn finish(command: Command) -> Run {
        finish_within(command, TIMEOUT)
    }

    /// Runs `command` to completion with piped output; kills it and fails, saying it hung, after
    /// `limit`.
    pub fn finish_within(mut command: Command, limit: Duration) -> Run {
        let described = format!("{command:?}");
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {described}: {e}"));
        let stdout = drain(child.stdout.take().expect("piped stdout"));
        let stderr = drain(child.stderr.take().expect("piped stderr"));
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("waiting for the child") {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{described} hung: it did not finish within {limit:?}; killed");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let text = |reader: std::thread::JoinHandle<String>| reader.join().expect("output reader");
        Run { status, stdout: text(stdout), stderr: text(stderr) }
    }

    /// Reads a pipe to its end on its own thread, so a chatty child never blocks on a full pipe.
    fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    }

    /// Asserts the child failed cleanly: non-zero exit (not a signal), exactly one stderr line that
    /// starts with `error:` and contains every one of `needles`, and no panic report. Returns the
    /// line.
    pub fn assert_error(run: &Run, needles: &[&str]) -> String {
        let context = format!("status: {:?}\nstdout:\n{}\nstderr:\n{}", run.status, run.stdout, run.stderr);
        match run.status.code() {
            Some(code) => assert_ne!(code, 0, "expected a failure\n{context}"),
            None => panic!("killed by a signal\n{context}"),
        }
        for panic_text in ["panicked at", "RUST_BACKTRACE", "stack backtrace"] {
            assert!(!run.stderr.contains(panic_text), "stderr shows a panic report ({panic_text:?})\n{context}");
        }
        // A run that failed after it started says, on a second line, how far it got.
        let lines: Vec<&str> = run.stderr.lines().filter(|line| !line.starts_with("the run stopped after ")).collect();
        assert_eq!(lines.len(), 1, "expected exactly one error line on stderr\n{context}");
        let line = lines[0];
        assert!(line.starts_with("error:"), "the line does not start with \"error:\"\n{context}");
        for needle in needles {
            assert!(line.contains(needle), "the error does not name {needle:?}\n{context}");
        }
        line.to_owned()
    }
}

/// The run report's schema (`tomii schema --report`) against real reports.
pub mod report_schema {
    use tomii_core::engine::{Report, report_schema};

    /// The schema's complaints about `report` as JSON, one line each; empty when it validates.
    pub fn complaints(report: &Report) -> Vec<String> {
        let json = serde_json::to_value(report).expect("a report serialises");
        let validator = jsonschema::validator_for(&report_schema())
            .unwrap_or_else(|e| panic!("the report schema does not compile: {e}"));
        validator.iter_errors(&json).map(|error| format!("at {}: {error}", error.instance_path())).collect()
    }

    /// Panics with every complaint unless `report` validates.
    pub fn check(what: &str, report: &Report) {
        let complaints = complaints(report);
        assert!(complaints.is_empty(), "{what}: the report does not match its schema:\n{}", complaints.join("\n"));
    }
}
